package manifest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		kind FileKind
		num  FileNum
	}{
		{"000001.sst", TableFileName("db", 1), FileKindTable, 1},
		{"123456789.sst", TableFileName("db", 123456789), FileKindTable, 123456789},
		{"000042.log", LogFileName("db", 42), FileKindLog, 42},
		{"MANIFEST-000007", ManifestFileName("db", 7), FileKindManifest, 7},
		{"CURRENT", CurrentFileName("db"), FileKindCurrent, 0},
		{"LOCK", LockFileName("db"), FileKindLock, 0},
		{"000009.dbtmp", TempFileName("db", 9), FileKindTemp, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, filepath.Join("db", tc.name), tc.got)
			kind, num, ok := ParseFileName(tc.name)
			require.True(t, ok)
			require.Equal(t, tc.kind, kind)
			require.Equal(t, tc.num, num)
		})
	}
}

func TestParseFileNameRejects(t *testing.T) {
	for _, name := range []string{
		"", "sst", ".sst", "x.sst", "1.txt", "-1.sst", "+1.log", "1_0.sst", "0x1.sst", " 1.sst",
		"MANIFEST-", "MANIFEST-x", "MANIFEST-1.sst", "manifest-000001", "CURRENT.tmp", "LOCK2",
		"000001.sst.bak", "18446744073709551616.sst", // 2^64 does not fit
	} {
		kind, num, ok := ParseFileName(name)
		require.False(t, ok, "%q", name)
		require.Equal(t, FileKindUnknown, kind, "%q", name)
		require.Zero(t, num, "%q", name)
	}
}

func TestFileNumString(t *testing.T) {
	require.Equal(t, "000000", FileNum(0).String())
	require.Equal(t, "000123", FileNum(123).String())
	require.Equal(t, "1234567", FileNum(1234567).String())
	for k := FileKindTable; k <= FileKindTemp; k++ {
		require.NotContains(t, k.String(), "FileKind(")
	}
	require.Equal(t, "FileKind(99)", FileKind(99).String())
}
