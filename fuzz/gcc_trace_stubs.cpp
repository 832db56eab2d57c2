// GCC's -fsanitize-coverage=trace-cmp also traces floating-point comparisons, which libFuzzer
// does not consume and does not define: these empty hooks satisfy the references from the
// instrumented libraries (the executable exports them to gpix_core and gpix_io).
extern "C" {
void __sanitizer_cov_trace_cmpf(float, float) {}
void __sanitizer_cov_trace_cmpd(double, double) {}
}
