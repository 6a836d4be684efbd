// Breaks the rule: base may not include the io layer's headers.
#include "posix_file.h"
