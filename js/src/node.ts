// The Node entry point: everything of index.ts, file paths as sources (read through a file
// handle, and handed to ONNX Runtime by the file route), and s3://bucket/key (signed with
// node:crypto).

import { createHash } from 'node:crypto';

import { FileSource } from './file.js';
import { registerFileOpener, registerS3Opener } from './open_source.js';
import { openS3Source } from './s3.js';
import { registerSha256 } from './sha256.js';

registerFileOpener((path) => FileSource.open(path));
registerS3Opener((url, options) => openS3Source(url, options, options.s3));
// Streaming: an entry is hashed piece by piece, never held whole (WebCrypto's digest is one-shot).
registerSha256(() => {
  const hash = createHash('sha256');
  return {
    update(piece) {
      hash.update(piece);
    },
    async digest() {
      return new Uint8Array(hash.digest());
    },
  };
});

export * from './index.js';
