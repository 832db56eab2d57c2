#include <gpix/gpix.h>

#include <cstdio>

int main() {
  std::printf("gpix %s, %zu device(s)\n", GPIX_VERSION_STRING, gpix::devices().size());
  if (gpix::devices().empty()) return 0;
  auto a = gpix::Array::push(std::vector<int>{3, 1, 2}, gpix::Shape{3});
  const auto s = gpix::stats(a);
  std::printf("min %s max %s\n", s.min.str().c_str(), s.max.str().c_str());
  return s.min.str() == "1" && s.max.str() == "3" ? 0 : 1;
}
