/* A library that the "missing_dep" test plugin links to and that is NOT on its search path. */
int gpix_test_dep_value(void) { return 42; }
