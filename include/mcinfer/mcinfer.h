#pragma once
// The public C++ API of mcinfer: everything a program outside the library may include.
#include "mcinfer/errors.h"
#include "mcinfer/model.h"
#include "mcinfer/run.h"
