// Runs s3rver (a real S3-compatible server) in its own process for the tests: its listing with
// continuation tokens needs Node's legacy OpenSSL provider, which the parent sets through
// NODE_OPTIONS for this process only. Arguments: directory, port (0: any free port). Prints one
// JSON line {"port": N} once it listens on 127.0.0.1.
//
// s3rver 3.7.1 answers a PUT once it has read the body, before the object's file is written
// (its filesystem store resolves on `writeStream.end()`, or on the body's last chunk): a GET right
// after can read 0 bytes or miss the object, which S3 itself (read-after-write consistent) never
// does, and oxbow's start-up probe then refuses the store ("read back 0 bytes"). The store's
// putObject is replaced here by the same steps that wait for the file to be written.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';
import FilesystemStore from 's3rver/lib/stores/filesystem.js';

FilesystemStore.prototype.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
  await mkdir(dirname(objectPath), { recursive: true });
  const md5 = createHash('md5');
  let size = 0;
  const body = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
  await pipeline(
    body,
    new Transform({
      transform(chunk, encoding, callback) {
        md5.update(chunk, encoding);
        size += chunk.length;
        callback(null, chunk);
      },
    }),
    createWriteStream(objectPath),
  );
  const digest = md5.digest('hex');
  await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  return { size, md5: digest };
};

const [directory, port] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: Number(port ?? 0), silent: true, directory, configureBuckets: [{ name: 'oxbow' }] });
const address = await server.run();
process.stdout.write(JSON.stringify({ port: address.port }) + '\n');
