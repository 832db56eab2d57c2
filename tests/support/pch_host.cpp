// The target that builds the precompiled header the suites of a folder share
// (cmake/GpixTest.cmake); it compiles nothing of its own.
