#pragma once
// Typed C++ functions for every catalog filter (one implementation behind these and
// gpix::run). Each function documents its semantics in the catalog entry of the same name
// (gpix::filter("name").doc); errors are as for gpix::run.
#include "gpix/catalog.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/neighbourhood.h"
#include "gpix/filters/segmentation.h"
#include "gpix/filters/geometry.h"
#include "gpix/filters/reductions.h"
