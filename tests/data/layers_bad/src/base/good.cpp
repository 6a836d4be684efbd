// Fine: base includes base only.
#include "onnxzip/bytes.h"
