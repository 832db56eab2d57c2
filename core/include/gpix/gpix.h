#pragma once
// The whole public API of gpix::core.
#include "gpix/array.h"
#include "gpix/device.h"
#include "gpix/dtype.h"
#include "gpix/error.h"
#include "gpix/filters.h"
#include "gpix/host_array.h"
#include "gpix/kernel.h"
#include "gpix/render.h"
#include "gpix/scalar.h"
#include "gpix/shape.h"
#include "gpix/stats.h"
#include "gpix/version.h"
