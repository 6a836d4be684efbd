// onnxzip: read .onnxz archives (spec/onnxz-format.md) in browsers and Node, and run them in
// ONNX Runtime. This entry point has no Node dependency; the package's 'node' export (node.ts)
// adds file paths.

export { Archive, openArchive, verify, type EntryInfo, type OpenOptions, type TensorInfo } from './archive.js';
export { OnnxzipError, type ErrorCode, type ErrorPlace } from './errors.js';
export type { Finding, FindingKind, Severity } from './findings.js';
export type { FetchFunction, HttpOptions } from './http.js';
export { DataType, dataTypeName } from './onnx.js';
export type { ArchiveSource, SourceOptions } from './open_source.js';
export type { S3Credentials, S3Options } from './s3_options.js';
export type { ExternalDataFile, OrtFlavor, OrtModel } from './ort.js';
export { createSession, ortFlavor, ortModelFor, type CreateSessionOptions, type OrtModule } from './session.js';
export type { ReadStats, SourceKind } from './source.js';
export type { TensorData } from './typed.js';
export { importPublicKey, type IntegrityLimits, type PublicKeyInfo } from './integrity.js';
export type { DigestsStatus, SignatureStatus, VerifyOptions, VerifyReport } from './verify.js';
export { version } from './version.js';
