#pragma once
// Arithmetic and type filters (catalog categories "Arithmetic" and "Types").
#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix {

Array add_images(const Array& a, const Array& b);
Array subtract_images(const Array& a, const Array& b);
Array multiply_images(const Array& a, const Array& b);
Array divide_images(const Array& a, const Array& b);
Array minimum_images(const Array& a, const Array& b);
Array maximum_images(const Array& a, const Array& b);
Array add_scalar(const Array& a, double value);
Array multiply_scalar(const Array& a, double factor);
Array absolute(const Array& a);
Array power(const Array& a, double exponent);
Array sqrt(const Array& a);
Array exp(const Array& a);
Array log(const Array& a);
Array clip(const Array& a, double minimum, double maximum);
Array invert(const Array& a);
Array convert(const Array& a, DType dtype);
Array rescale_intensity(const Array& a, double out_min = 0, double out_max = 1);

}  // namespace gpix
