// Where an s3://bucket/key source's store is, overriding the AWS variables and files
// (spec/names.md, "s3 options"; C++ include/onnxzip/s3_options.h, spelled in camelCase). Reading
// only: the JavaScript package does not write to a bucket.

/** Keys that sign requests. Never shown: no message, error or inspect output holds them. */
export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Absent or "" without one (long-term keys). */
  readonly sessionToken?: string;
}

/**
 * Each field left out is found as the AWS tools find it: AWS_* variables, ~/.aws/credentials and
 * ~/.aws/config (the README's "Object storage" section lists the order).
 */
export interface S3Options {
  readonly credentials?: S3Credentials;
  readonly profile?: string;
  readonly region?: string;
  /** "http://127.0.0.1:9000", "https://ACCOUNT.r2.cloudflarestorage.com": addressed path-style. */
  readonly endpointUrl?: string;
}

/** Whether `text` is an s3:// URL (the scheme in either case, as C++ is_s3_url). */
export function isS3Url(text: string): boolean {
  return /^[sS]3:\/\//.test(text);
}
