// Compiled, not run (npm run typecheck): the public API against the real ORT type declarations.
// createSession must take both ORT modules as they are, infer their session type, and type-check
// their session options; nothing in the API is `any`.
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';

import { createSession, openArchive, verify, type OnnxzipError, type S3Options, type TensorData } from '../../dist/index.js';

export async function nodeSession(): Promise<ortNode.InferenceSession> {
  return createSession(ortNode, 'model.onnxz', { executionProviders: ['cpu'], graphOptimizationLevel: 'basic' });
}

export async function webSession(file: Blob): Promise<ortWeb.InferenceSession> {
  const session = await createSession(ortWeb, file, { executionProviders: ['wasm'] }, { route: 'externalData' });
  return session;
}

export async function tensors(url: string): Promise<number> {
  const archive = await openArchive(new URL(url), { headers: { Authorization: 'Bearer x' } });
  const data: TensorData = await archive.getTensor(archive.tensors[0]!);
  const report = await archive.verify();
  return data.length + report.findings.length;
}

// The s3 option, spelled as spec/names.md spells it for JavaScript, on every entry point.
export async function fromBucket(): Promise<number> {
  const s3: S3Options = { region: 'auto', endpointUrl: 'http://127.0.0.1:9000', profile: 'p', credentials: { accessKeyId: 'a', secretAccessKey: 's', sessionToken: 't' } };
  const archive = await openArchive('s3://models/m.onnxz', { s3 });
  const report = await verify('s3://models/m.onnxz', { s3, publicKey: 'pem' });
  await createSession(ortNode, 's3://models/m.onnxz', {}, { s3 });
  return archive.tensors.length + report.findings.length;
}

// @ts-expect-error -- C++'s spelling is not the JavaScript one.
export const snakeCase: S3Options = { endpoint_url: 'http://h' };

export function code(e: OnnxzipError): 'corrupt' | 'unsupported' | 'not_found' | 'io' | 'invalid_argument' | 'limit_exceeded' | 'bad_state' | 'changed' {
  return e.code;
}

// @ts-expect-error -- a session option of the wrong type is refused.
export const wrong = (): Promise<ortNode.InferenceSession> => createSession(ortNode, 'm.onnxz', { graphOptimizationLevel: 'sometimes' });
