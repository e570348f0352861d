// npm install hook: builds the native RocksDB addon (storage/native) against the system RocksDB
// library. If the headers or the library are missing it installs them with apt-get when running
// as root on Debian/Ubuntu; otherwise it prints the exact command to run and fails clearly.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const packages = ['librocksdb-dev', 'build-essential'];
const aptCommand = `apt-get install -y ${packages.join(' ')}`;

function hasRocksDb() {
  const headerDirectories = ['/usr/include', '/usr/local/include'];
  const libraryDirectories = ['/usr/lib', '/usr/local/lib', '/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64'];
  const header = headerDirectories.some((directory) => existsSync(join(directory, 'rocksdb', 'db.h')));
  const library = libraryDirectories.some((directory) => existsSync(join(directory, 'librocksdb.so')));
  return header && library;
}

function hasCompiler() {
  return spawnSync('g++', ['--version'], { stdio: 'ignore' }).status === 0 && spawnSync('make', ['--version'], { stdio: 'ignore' }).status === 0;
}

function isDebianLike() {
  if (!existsSync('/etc/os-release')) return false;
  const text = readFileSync('/etc/os-release', 'utf8');
  return /^(ID|ID_LIKE)=.*\b(debian|ubuntu)\b/m.test(text);
}

function fail(message) {
  console.error(`oxbow: ${message}`);
  process.exit(1);
}

if (!hasRocksDb() || !hasCompiler()) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && isDebianLike()) {
    console.log(`oxbow: RocksDB library or C++ toolchain missing; running: ${aptCommand}`);
    try {
      execFileSync('apt-get', ['update'], { stdio: 'inherit' });
      execFileSync('apt-get', ['install', '-y', ...packages], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    } catch {
      fail(`installing the RocksDB library failed; run as root: apt-get update && ${aptCommand}`);
    }
    if (!hasRocksDb()) fail(`the RocksDB library is still missing after ${aptCommand}`);
  } else if (isDebianLike()) {
    fail(`the RocksDB library (headers and librocksdb.so) or a C++ toolchain is missing. Run:\n  sudo apt-get update && sudo ${aptCommand}\nthen npm install again.`);
  } else {
    fail('the RocksDB library (headers and librocksdb.so) or a C++ toolchain is missing. Install RocksDB >= 7 development files and a C++17 compiler (e.g. Fedora: sudo dnf install rocksdb-devel gcc-c++ make; macOS: brew install rocksdb), then npm install again.');
  }
}

// Prefer the headers that ship with this Node.js (no network needed); node-gyp downloads them otherwise.
const nodePrefix = resolve(dirname(process.execPath), '..');
const nodeDirectoryArgument = existsSync(join(nodePrefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${nodePrefix}`] : [];
const nodeGyp = join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
if (!existsSync(nodeGyp)) fail('node-gyp is missing from node_modules; run npm install');
const build = spawnSync(process.execPath, [nodeGyp, 'rebuild', ...nodeDirectoryArgument, '--directory', join(root, 'storage', 'native')], {
  stdio: 'inherit',
});
if (build.status !== 0) fail('building the native RocksDB addon (storage/native) failed; see the compiler output above');
console.log('oxbow: native RocksDB addon built (storage/native/build/Release/oxbow_rocksdb.node)');
