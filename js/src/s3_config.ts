// Where an s3:// URL points and how to sign for it, found as the AWS tools find it (botocore's
// precedence), the same way as the C++ library (src/io/s3_config.h):
//
//   credentials  S3Options.credentials; else AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
//                AWS_SESSION_TOKEN) unless S3Options.profile is given; else the profile's keys in
//                the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials,
//                section [name]), then in the config file (AWS_CONFIG_FILE, ~/.aws/config,
//                section [profile name], or [default]).
//   profile      S3Options.profile, else AWS_PROFILE, else "default".
//   region       S3Options.region, else AWS_REGION, else AWS_DEFAULT_REGION, else the profile's
//                `region` in the config file, else us-east-1.
//   endpoint     S3Options.endpointUrl, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the
//                profile's `endpoint_url`; such an endpoint is addressed path-style. Without one,
//                AWS: https://bucket.s3.region.amazonaws.com/key (path-style for a bucket with a dot).
// Messages name the variable, file and profile; never a key, secret or token. The files are read
// through `readFile`, which the Node entry point gives (this module has no Node import).

import { OnnxzipError } from './errors.js';
import type { S3Credentials, S3Options } from './s3_options.js';
import { encodePath } from './s3_path.js';

/** "s3://bucket/key": its parts, and the name messages use. */
export interface S3Location {
  readonly bucket: string;
  readonly key: string;
  readonly name: string;
}

/** Reads a variable of the environment: undefined when unset. Tests pass their own. */
export type Environment = (name: string) => string | undefined;
/** A file's text; undefined when it does not exist; throws an OnnxzipError when it cannot be read. */
export type FileReader = (path: string, what: string) => string | undefined;

/** What a request needs: resolved once per open. The keys sit in a private field (never shown). */
export class S3Config {
  readonly #credentials: S3Credentials;
  constructor(
    credentials: S3Credentials,
    readonly region: string,
    /** "scheme://host[:port]", no path, no trailing '/'; "" for AWS. */
    readonly endpoint: string,
  ) {
    this.#credentials = credentials;
  }

  /** @internal For the signer only. */
  credentials(): S3Credentials {
    return this.#credentials;
  }

  toJSON(): object {
    return { region: this.region, endpoint: this.endpoint };
  }
}

/**
 * The bucket and key of "s3://bucket/key". invalid_argument naming the URL for another scheme, an
 * empty or ill-formed bucket, or no key.
 */
export function parseS3Url(url: string): S3Location {
  const refuse = (problem: string): never => {
    throw new OnnxzipError('invalid_argument', { source: url }, problem);
  };
  if (!/^[sS]3:\/\//.test(url)) refuse('not an s3://bucket/key URL');
  const rest = url.slice(5);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(bucket)) refuse('an S3 bucket name is 1 to 255 of A-Z a-z 0-9 . - _');
  if (slash < 0 || slash + 1 === rest.length) refuse('the URL names a bucket but no key (s3://bucket/key)');
  const key = rest.slice(slash + 1);
  return { bucket, key, name: `s3://${bucket}/${key}` };
}

type Section = Map<string, string>;
type IniFile = Map<string, Section>;

/**
 * The INI dialect of ~/.aws/*: [section], `name = value`, comments from '#' or ';' at a line's
 * start, names compared in lower case; an indented line belongs to a nested block (`s3 =` and its
 * indented settings), which is skipped.
 */
export function parseIni(text: string): IniFile {
  const out: IniFile = new Map();
  let section: Section | undefined;
  for (let line of text.split('\n')) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const indented = line.startsWith(' ') || line.startsWith('\t');
    line = line.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[') && line.endsWith(']') && !indented) {
      const name = line.slice(1, -1).trim();
      section = out.get(name) ?? new Map();
      out.set(name, section);
      continue;
    }
    if (section === undefined || indented) continue;
    const equals = line.search(/[=:]/);
    if (equals < 0) continue;
    section.set(line.slice(0, equals).trim().toLowerCase(), line.slice(equals + 1).trim());
  }
  return out;
}

function homeFile(environment: Environment, variable: string, underHome: string): string {
  const path = environment(variable);
  if (path !== undefined && path !== '') {
    const home = environment('HOME');
    return path.startsWith('~/') && home !== undefined ? home + path.slice(1) : path;
  }
  return `${environment('HOME') ?? ''}/${underHome}`;
}

// The config file's section of a profile: [profile NAME]; for "default" also [default].
function configProfile(config: IniFile, profile: string): Section | undefined {
  for (const [name, section] of config) {
    if (/^profile\s/.test(name) && name.slice(8).trim() === profile) return section;
  }
  return profile === 'default' ? config.get('default') : undefined;
}

function credentialsIn(section: Section | undefined): S3Credentials | undefined {
  const accessKeyId = section?.get('aws_access_key_id') ?? '';
  const secretAccessKey = section?.get('aws_secret_access_key') ?? '';
  const sessionToken = section?.get('aws_session_token') || section?.get('aws_security_token') || '';
  return accessKeyId === '' || secretAccessKey === '' ? undefined : { accessKeyId, secretAccessKey, sessionToken };
}

function environmentCredentials(environment: Environment): S3Credentials | undefined {
  const accessKeyId = environment('AWS_ACCESS_KEY_ID') ?? '';
  const secretAccessKey = environment('AWS_SECRET_ACCESS_KEY') ?? '';
  const sessionToken = environment('AWS_SESSION_TOKEN') || environment('AWS_SECURITY_TOKEN') || '';
  return accessKeyId === '' || secretAccessKey === '' ? undefined : { accessKeyId, secretAccessKey, sessionToken };
}

// "scheme://host[:port]" from an endpoint URL, checked; a trailing '/' is dropped.
function checkEndpoint(url: string, where: string): string {
  const scheme = /^https?:\/\//i.exec(url)?.[0].toLowerCase();
  const rest = url.slice(scheme?.length ?? 0).replace(/\/+$/, '');
  if (scheme === undefined || rest === '' || /[/?#@ \t\r\n]/.test(rest)) {
    throw new OnnxzipError('invalid_argument', {}, `the S3 endpoint from ${where} must be http(s)://host[:port] with no path, user or query`);
  }
  return scheme + rest.toLowerCase();
}

interface ProfileFiles {
  readonly profile: string;
  readonly credentialsPath: string;
  readonly configPath: string;
  readonly credentialsSection: Section | undefined;
  readonly configSection: Section | undefined;
}

// The profile named by the caller, else AWS_PROFILE, else "default", with its sections; a profile
// the caller named must exist somewhere, a default one need not.
function readProfile(options: S3Options, environment: Environment, readFile: FileReader): ProfileFiles {
  const profile = options.profile || environment('AWS_PROFILE') || 'default';
  const credentialsPath = homeFile(environment, 'AWS_SHARED_CREDENTIALS_FILE', '.aws/credentials');
  const configPath = homeFile(environment, 'AWS_CONFIG_FILE', '.aws/config');
  const credentialsSection = parseIni(readFile(credentialsPath, 'credentials') ?? '').get(profile);
  const configSection = configProfile(parseIni(readFile(configPath, 'config') ?? ''), profile);
  if ((options.profile ?? '') !== '' && credentialsSection === undefined && configSection === undefined) {
    throw new OnnxzipError('invalid_argument', {}, `the AWS profile '${profile}' is in neither ${credentialsPath} nor ${configPath}`);
  }
  return { profile, credentialsPath, configPath, credentialsSection, configSection };
}

// The caller's keys, else the environment's, else the profile's in the credentials file, else in
// the config file. botocore: a profile named by the caller negates the environment's keys;
// AWS_PROFILE does not.
function resolveCredentials(options: S3Options, environment: Environment, files: ProfileFiles): S3Credentials {
  if (options.credentials !== undefined) return options.credentials;
  const found =
    ((options.profile ?? '') === '' ? environmentCredentials(environment) : undefined) ??
    credentialsIn(files.credentialsSection) ??
    credentialsIn(files.configSection);
  if (found === undefined) {
    throw new OnnxzipError(
      'not_found',
      {},
      `no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile '${files.profile}' aws_access_key_id and aws_secret_access_key in ${files.credentialsPath} or ${files.configPath}`,
    );
  }
  return found;
}

function resolveRegion(options: S3Options, environment: Environment, files: ProfileFiles): string {
  const region = options.region || environment('AWS_REGION') || environment('AWS_DEFAULT_REGION') || files.configSection?.get('region') || 'us-east-1';
  // The region goes into a host name and the signing scope.
  if (!/^[A-Za-z0-9-]*$/.test(region)) throw new OnnxzipError('invalid_argument', {}, `an AWS region is letters, digits and '-' ("${region}")`);
  return region;
}

function resolveEndpoint(options: S3Options, environment: Environment, files: ProfileFiles): string {
  const candidates: [string | undefined, string][] = [
    [options.endpointUrl, 'S3Options.endpointUrl'],
    [environment('AWS_ENDPOINT_URL_S3'), 'AWS_ENDPOINT_URL_S3'],
    [environment('AWS_ENDPOINT_URL'), 'AWS_ENDPOINT_URL'],
    [files.configSection?.get('endpoint_url'), `profile '${files.profile}' in ${files.configPath}`],
  ];
  const found = candidates.find(([value]) => value !== undefined && value !== '');
  return found === undefined ? '' : checkEndpoint(found[0]!, found[1]);
}

/**
 * The settings for `options`: not_found when no credentials are found (saying where it looked),
 * invalid_argument for an endpoint that is not http(s)://host[:port] or a profile named
 * explicitly that no file has; the reader's error for a file that cannot be read.
 */
export function resolveConfig(options: S3Options, environment: Environment, readFile: FileReader): S3Config {
  const files = readProfile(options, environment, readFile);
  return new S3Config(resolveCredentials(options, environment, files), resolveRegion(options, environment, files), resolveEndpoint(options, environment, files));
}

/** Where a request for `location` goes: the URL, the Host header and the encoded path that is signed. */
export interface S3Target {
  readonly url: string;
  readonly host: string;
  readonly encodedPath: string;
}

export function s3Target(config: S3Config, location: S3Location): S3Target {
  let base: string;
  let encodedPath: string;
  if (config.endpoint !== '') {
    base = config.endpoint;
    encodedPath = encodePath(location.bucket, location.key);
  } else if (location.bucket.includes('.')) {
    base = `https://s3.${config.region}.amazonaws.com`;
    encodedPath = encodePath(location.bucket, location.key);
  } else {
    base = `https://${location.bucket}.s3.${config.region}.amazonaws.com`;
    encodedPath = encodePath('', location.key);
  }
  let host = base.slice(base.indexOf('://') + 3);
  // The port is left out of Host when it is the scheme's own (as fetch and botocore do).
  if (base.startsWith('http://') && host.endsWith(':80')) host = host.slice(0, -3);
  if (base.startsWith('https://') && host.endsWith(':443')) host = host.slice(0, -4);
  return { url: base + encodedPath, host, encodedPath };
}
