// The Node entry point: everything of index.ts, and file paths as sources (read through a file
// handle, and handed to ONNX Runtime by the file route).

import { FileSource } from './file.js';
import { registerFileOpener } from './open_source.js';

registerFileOpener((path) => FileSource.open(path));

export * from './index.js';
