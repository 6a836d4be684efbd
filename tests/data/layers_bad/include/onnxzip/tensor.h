// A public header of the onnx layer.
#include "onnxzip/bytes.h"
