// Goes across: a private header of the zip layer.
#include "onnxzip/bytes.h"
#include "zip_records.h"
