// Chunks and hashes a file with the official Xet implementation and prints
// {chunks: [{length, hash}], xorb, file} as JSON (hashes as hashToHex writes them).
import { readFileSync } from "node:fs";
import { getChunks, hashToHex, xorbHash, fileHash } from "@huggingface/xetchunk-wasm";

const data = new Uint8Array(readFileSync(process.argv[2]));
const chunks = getChunks(data);
process.stdout.write(JSON.stringify({
	chunks: chunks.map((c) => ({ length: c.length, hash: hashToHex(c.hash) })),
	xorb: hashToHex(xorbHash(chunks)),
	file: hashToHex(fileHash(chunks)),
}));
