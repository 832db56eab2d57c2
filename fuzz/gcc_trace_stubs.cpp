// GCC's -fsanitize-coverage=trace-cmp also traces floating-point comparisons, which libFuzzer
// does not consume and does not define: these empty hooks satisfy the references from the
// instrumented code (a shared library of their own, gpix_fuzz_trace_stubs, linked to every
// target of a fuzz build: the test suites as well as the fuzz targets).
extern "C" {
void __sanitizer_cov_trace_cmpf(float, float) {}
void __sanitizer_cov_trace_cmpd(double, double) {}
}
