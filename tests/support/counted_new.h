#pragma once
// Counts the program's heap allocations: counted_new.cpp replaces the global operator new
// (the plain and aligned forms, and their nothrow twins); a binary that links it reads the count
// with gpix::test::news(). Used by test_core_allocations and bench_launch (issue 17: "no
// allocation on the hot path of a repeated call").
#include <cstdint>

namespace gpix::test {

// Calls of operator new so far.
std::uint64_t news();

}  // namespace gpix::test
