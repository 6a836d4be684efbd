// The package as npm ships it: its exports, its version and its licence.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import * as browserEntry from '../../dist/index.js';
import * as nodeEntry from '../../dist/node.js';
import { repo } from '../support/fixtures.mjs';

const jsDir = join(repo, 'js');
const packageJson = JSON.parse(readFileSync(join(jsDir, 'package.json'), 'utf8'));

describe('package', () => {
  it("exports './package.json', resolvable by the package's own name", () => {
    const require = createRequire(join(jsDir, 'test', 'unit', 'package.test.mjs'));
    assert.equal(require('onnxzip/package.json').version, packageJson.version);
  });

  it('exports its version: package.json\'s, and the C++ project\'s', () => {
    const cmake = /project\(onnxzip VERSION (\d+\.\d+\.\d+)/.exec(readFileSync(join(repo, 'CMakeLists.txt'), 'utf8'));
    assert.ok(cmake !== null, 'CMakeLists.txt names no project VERSION');
    assert.equal(nodeEntry.version, packageJson.version);
    assert.equal(browserEntry.version, packageJson.version);
    assert.equal(packageJson.version, cmake[1]);
  });

  it('ships LICENSE (the repository\'s) in the npm tarball', () => {
    assert.equal(readFileSync(join(jsDir, 'LICENSE'), 'utf8'), readFileSync(join(repo, 'LICENSE'), 'utf8'));
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: jsDir, encoding: 'utf8' }));
    const files = packed.files.map((f) => f.path);
    assert.ok(files.includes('LICENSE'), files.join(', '));
    assert.ok(files.includes('dist/index.js') && files.includes('dist/node.js'), files.join(', '));
  });
});
