// Encodes text with the tiktoken core (npm tiktoken: OpenAI's Rust BPE
// compiled to WebAssembly) configured as Kimi's tokenizer: a checkpoint's
// tiktoken.model, its 256 specials from tokenizer_config.json, Kimi's
// pat_str, and tokenization_kimi.py's cutting of the input before tiktoken
// sees it. The Go tests compare its ids with theirs and race it.
//
//   node encode.mjs DIR ids CASES.json   prints [{ids, ids_allow_special}] per case
//   node encode.mjs DIR bench TEXT       prints {"load_ns", "bytes", "ids"} once ready,
//                                        then for each line N read from stdin encodes
//                                        TEXT N times and prints {"ns"}, so that a Go
//                                        benchmark can alternate with it under one load
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Tiktoken } from "tiktoken/lite";

// tokenization_kimi.py's pat_str.
const patStr = [
	"[\\p{Han}]+",
	"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
	"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
	"\\p{N}{1,3}",
	" ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
	"\\s*[\\r\\n]+",
	"\\s+(?!\\S)",
	"\\s+",
].join("|");

// tokenization_kimi.py's limits, in code points.
const maxEncodeChars = 400_000;
const maxSameClassRun = 25_000;

// Python's str.isspace (White_Space, plus U+001C..U+001F, without U+FEFF).
const pySpace = new Set([
	0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
	0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
	0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

// kimiChunks cuts s into slices of maxEncodeChars code points and cuts each
// slice again before any run of more than maxSameClassRun whitespace or
// non-whitespace code points, as tokenization_kimi.py does.
function kimiChunks(s) {
	const cps = Array.from(s);
	const out = [];
	for (let i = 0; i < cps.length; i += maxEncodeChars) {
		const slice = cps.slice(i, i + maxEncodeChars);
		let inSpace = pySpace.has(slice[0].codePointAt(0));
		let run = 0;
		let start = 0;
		for (let j = 0; j < slice.length; j++) {
			const sp = pySpace.has(slice[j].codePointAt(0));
			if (sp !== inSpace) {
				inSpace = sp;
				run = 1;
				continue;
			}
			run++;
			if (run > maxSameClassRun) {
				out.push(slice.slice(start, j).join(""));
				start = j;
				run = 1;
			}
		}
		out.push(slice.slice(start).join(""));
	}
	return out;
}

function load(dir) {
	const ranks = readFileSync(`${dir}/tiktoken.model`, "utf8");
	const nRanks = ranks.split("\n").filter((l) => l.trim() !== "").length;
	const config = JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
	const specials = {};
	for (let id = nRanks; id < nRanks + 256; id++) {
		specials[config.added_tokens_decoder?.[id]?.content ?? `<|reserved_token_${id}|>`] = id;
	}
	return new Tiktoken(ranks, specials, patStr);
}

function encode(enc, chunks, allowSpecial) {
	const ids = [];
	for (const c of chunks) {
		for (const id of allowSpecial ? enc.encode(c, "all") : enc.encode_ordinary(c)) {
			ids.push(id);
		}
	}
	return ids;
}

const [dir, mode, path] = process.argv.slice(2);
const t0 = process.hrtime.bigint();
const enc = load(dir);
const loadNs = process.hrtime.bigint() - t0;
if (mode === "ids") {
	const cases = JSON.parse(readFileSync(path, "utf8")).cases;
	process.stdout.write(JSON.stringify(cases.map((c) => {
		const chunks = kimiChunks(c.text);
		return { ids: encode(enc, chunks, false), ids_allow_special: encode(enc, chunks, true) };
	})));
} else if (mode === "bench") {
	const text = readFileSync(path, "utf8");
	// The cutting is done once, outside the clock: only the core is timed.
	const chunks = kimiChunks(text);
	let count = 0;
	for (const c of chunks) count += enc.encode_ordinary(c).length; // also the warm-up
	process.stdout.write(JSON.stringify({ load_ns: Number(loadNs), bytes: Buffer.byteLength(text), ids: count }) + "\n");
	for await (const line of createInterface({ input: process.stdin })) {
		const start = process.hrtime.bigint();
		for (let i = 0; i < Number(line); i++) {
			for (const c of chunks) enc.encode_ordinary(c);
		}
		process.stdout.write(JSON.stringify({ ns: Number(process.hrtime.bigint() - start) }) + "\n");
	}
} else {
	process.stderr.write("usage: node encode.mjs DIR ids CASES.json | DIR bench TEXT\n");
	process.exit(2);
}
enc.free();
