// Entry names: ZIP's rules for hostile names (spec §9.2 item 11) and .onnxz's rules for payload
// and reserved names (spec §6).

/** Why `name` is a hostile ZIP name (spec §9.2 item 11), or undefined. */
export function hostileNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'the entry name is empty';
  if (name.includes('\0')) return 'the entry name contains a NUL byte';
  if (name.includes('\\')) return 'the entry name contains a backslash';
  if (name.startsWith('/')) return 'the entry name is an absolute path';
  if (/^[A-Za-z]:/.test(name)) return 'the entry name begins with a drive letter';
  if (name.split('/').includes('..')) return "the entry name has a '..' path component";
  return undefined;
}

export const kModelEntryName = '__MODEL_PROTO';

/** Why `name` is not a valid payload entry name (spec §6.1 items 1-3), or undefined. */
export function payloadNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > 255) return `is ${name.length} bytes long (at most 255)`;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return 'is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)';
  if (name.startsWith('__')) return "begins with '__' (reserved for the format)";
  return undefined;
}

/** A reserved name (spec §6.2): '__' followed by the rest of a C identifier. */
export function isReservedName(name: string): boolean {
  return /^__[A-Za-z0-9_]*$/.test(name);
}
