#pragma once
// Comparisons of results that tests share.
#include "gpix/gpix.h"

namespace gpix::test {

// Whether two arrays hold the same pixels to the bit: the same shape and dtype, and the same
// bytes once pulled (NaN payloads and signed zeros included; padding is not compared).
bool same_bits(const Array& a, const Array& b);

}  // namespace gpix::test
