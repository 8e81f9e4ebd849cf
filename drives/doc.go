// Package drives keeps replicas of a checkpoint's routed experts on other
// disks, so that the engine reads a token's experts from several devices
// at once (experts.Drive; the expert store's read scheduler,
// experts/sched.go, spreads the reads). It uses package experts, not the
// engine: Spans to list what to copy, ReplicaRange and SpanCRC for a copy.
//
// A drive is a directory (deltafin-experts/ under the path the user adds)
// holding one file of copies, experts.bin, and manifest.json: for each
// copied expert where its copy lies and the CRC-32C of its bytes, computed
// from the mirror's bytes at copy time. Fill copies experts from the mirror,
// hottest first by the heat histogram, through the same ckpt.Source the
// engine reads the mirror with (a stream install's missing bytes are
// fetched and verified by the downloader first); each copy is read back
// from the device and checked before the manifest names it, and the
// manifest is replaced atomically after the copies it names are fsynced, so
// a copy interrupted at any point resumes where the last manifest ends.
//
// The mirror stays complete and authoritative. A drive that vanishes only
// costs its bandwidth (the engine reads its experts from the others); a
// copy whose bytes fail their checksum on read is reported through
// Corrupt, no longer offered, and copied again by Repair (or Scrub, which
// checks every copy).
package drives
