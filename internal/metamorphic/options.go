package metamorphic

import (
	"math/rand/v2"
	"strings"
)

// Config is one option set a history runs under: a name and the query part
// of a DSN (the database directory comes first, then "?" and this).
type Config struct {
	Name string
	DSN  string
}

// small is the base of the configurations that must flush and compact
// within a short history: the smallest memtables the engine accepts, small
// caches and tables, and early L0 compactions.
const small = "write_buffer_size=64KiB&block_cache_size=64KiB&target_file_size_base=32KiB" +
	"&max_bytes_for_level_base=128KiB&level0_file_num_compaction_trigger=2"

// with returns the DSN query base with params added; a key params repeats
// takes params' value, since a DSN may not name a key twice.
func with(base string, params ...string) string {
	var keys []string
	vals := map[string]string{}
	for _, kv := range append(strings.Split(base, "&"), params...) {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + vals[k]
	}
	return strings.Join(out, "&")
}

// Configs are the fixed option sets every history runs under. Each one
// stresses another part of the engine; the outputs of all must equal the
// model's. (The engine's limits: write_buffer_size at least 64KiB,
// max_open_files 0 or at least 8, block sizes at least 256.)
var Configs = []Config{
	{"default", ""},
	{"tiny", with(small, "block_size=256", "block_restart_interval=4", "max_write_buffer_number=3")},
	{"mmap", with(small, "mmap_reads=true")},
	{"nocache", with(small, "block_cache_size=0")},
	{"partitioned", with(small, "partition_index_and_filters=true", "cache_index_and_filter_blocks=true",
		"metadata_block_size=256", "block_size=256", "high_pri_pool_ratio=0.2")},
	{"nocompress-crc32c", with(small, "compression=none", "checksum=crc32c", "block_restart_interval=1")},
	{"snappy-sync", with(small, "compression=snappy", "sync=true")},
	{"filters-for-hits", with(small, "optimize_filters_for_hits=true", "target_file_size_base=8KiB",
		"level0_file_num_compaction_trigger=1", "level0_slowdown_writes_trigger=4", "level0_stop_writes_trigger=8")},
	{"nobloom-fewfiles", with(small, "bloom_bits_per_key=0", "max_open_files=8", "paranoid_file_checks=true")},
	// The prefix configs also carry the other codecs, so that prefix
	// filters are read from zstd tables and from tables whose codec changes
	// with the level, beside flushes, compactions and snapshots, without a
	// config more to run.
	{"prefix-fixed-zstd", with(small, "prefix_extractor=fixed:4", "compression=zstd", "zstd_level=3")},
	{"prefix-capped-partitioned-per-level", with(small, "prefix_extractor=capped:5", "partition_index_and_filters=true",
		"metadata_block_size=256", "block_size=256", "compression_per_level=none:snappy",
		"bottommost_compression=zstd", "zstd_level=1")},
	{"manual-compactions", with("write_buffer_size=64KiB", "disable_auto_compactions=true",
		"max_manifest_file_size=1KiB", "block_cache_off_heap=false", "file_checksums=false")},
}

// RandomConfig draws an option set from seed, as Pebble's metamorphic test
// adds randomized options to its fixed ones.
func RandomConfig(seed uint64) Config {
	rng := rand.New(rand.NewPCG(seed, 0x6f707473))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	ps := []string{
		"write_buffer_size=" + pick("64KiB", "64KiB", "256KiB", "4MiB"),
		"block_cache_size=" + pick("0", "16KiB", "64KiB", "1MiB"),
		"target_file_size_base=" + pick("2KiB", "16KiB", "64KiB", "2MiB"),
		"max_bytes_for_level_base=" + pick("64KiB", "256KiB", "4MiB"),
		"level0_file_num_compaction_trigger=" + pick("1", "2", "4"),
		"block_size=" + pick("256", "512", "4KiB"),
		"block_restart_interval=" + pick("1", "2", "16"),
		"bloom_bits_per_key=" + pick("0", "1", "10"),
		"compression=" + pick("none", "snappy", "zstd"),
		"compression_per_level=" + pick("default", "default", "none:zstd", "zstd:none:snappy"),
		"bottommost_compression=" + pick("default", "default", "zstd", "none"),
		"zstd_level=" + pick("1", "3", "9"),
		"checksum=" + pick("xxh64", "crc32c"),
		"mmap_reads=" + pick("true", "false"),
		"optimize_filters_for_hits=" + pick("true", "false"),
		"max_open_files=" + pick("0", "8", "16"),
		"prefix_extractor=" + pick("none", "none", "fixed:1", "fixed:4", "capped:3", "capped:6"),
	}
	if rng.IntN(2) == 0 {
		ps = append(ps, "partition_index_and_filters=true", "cache_index_and_filter_blocks=true",
			"metadata_block_size="+pick("256", "1KiB"))
	}
	if rng.IntN(4) == 0 {
		ps = append(ps, "sync=true")
	}
	rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	return Config{Name: "random", DSN: strings.Join(ps, "&")}
}
