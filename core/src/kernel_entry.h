#pragma once
// One-entry programs: a kernel file's text with every kernel but the one asked for taken out.
//
// Why: NVIDIA's OpenCL compiler optimises every kernel of a program when the program is
// built, so a filter's first call paid for all the kernels of its file (neighbourhood.kernel's
// 14 took 1.2 s on an H100, where the one a filter needs is a fraction of that; figures in
// bench/RESULTS.md). Backends whose compile time grows with the kernels in a program build one
// program per entry from this text (DeviceImpl::programs_per_entry()).
//
// What is taken out, and only when it is recognised with certainty (anything else stays, so
// the result always compiles where the whole file does):
//   - a top-level kernel definition, `GPIX_KERNEL ... name(...) { ... }`, whose body holds no
//     preprocessor directive (a directive could hide unbalanced braces from this scan);
//   - a top-level use of a macro whose body defines kernels (`R1_DEFINE(sum, ...)`) and no
//     other functions, when none of the kernel names it makes (its `a##param##b` patterns,
//     expanded with the use's arguments) is the entry.
// Comments, strings and directives are skipped by the scan. What is removed becomes spaces,
// its line breaks kept, so the compiler's line numbers (and `#line`) stay right.
#include <string>
#include <string_view>
#include <vector>

namespace gpix::detail {

// `text` with the kernels that are not `entry` taken out (see above). An entry that the text
// does not define leaves every kernel the scan recognises taken out; the compiler's "no such
// kernel" then names it, as it did for the whole file.
std::string single_entry_source(std::string_view text, std::string_view entry);

// The same with every kernel of `entries` kept: one program for kernels that a filter always
// asks for together (program groups, below).
std::string entries_source(std::string_view text, const std::vector<std::string>& entries);

// A kernel file's program groups: each comment of the form
//   /* gpix-program-group: name name ... */
// names kernels that are built as one program wherever programs are built per entry, so that a
// filter that runs them one after another with the same defines pays one build instead of one
// each (NVIDIA's OpenCL: about 45 ms a build at least, bench/RESULTS.md 2026-11-28). A kernel
// belongs to at most one group.
std::vector<std::vector<std::string>> program_groups(std::string_view text);

// The kernel names the scan recognises in `text`, in order: top-level definitions (strippable
// or not) and the names that kernel macros' top-level uses make. For tests and tools.
std::vector<std::string> recognised_entries(std::string_view text);

}  // namespace gpix::detail
