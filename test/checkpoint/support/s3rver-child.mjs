// Runs s3rver (a real S3-compatible server) in its own process for the tests: its listing with
// continuation tokens needs Node's legacy OpenSSL provider, which the parent sets through
// NODE_OPTIONS for this process only. Arguments: directory, port (0: any free port). Prints one
// JSON line {"port": N} once it listens on 127.0.0.1.
import S3rver from 's3rver';

const [directory, port] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: Number(port ?? 0), silent: true, directory, configureBuckets: [{ name: 'oxbow' }] });
const address = await server.run();
process.stdout.write(JSON.stringify({ port: address.port }) + '\n');
