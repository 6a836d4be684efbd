// Private to the zip layer.
#include "onnxzip/bytes.h"
