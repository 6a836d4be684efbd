// Goes up: zip may not include the onnx layer.
#include "onnxzip/tensor.h"
#include "zip_records.h"
