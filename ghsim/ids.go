package ghsim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Database ids are allocated from one counter per kind, starting at a kind-specific base, in seed
// order; node ids are derived from them. Both are therefore identical for identical seeds.
var idBases = map[string]int64{
	"org":         9_000_001,
	"user":        10_001,
	"bot":         20_001,
	"repo":        30_001,
	"project":     5_001,
	"field":       6_000_001,
	"issue":       1_000_001,
	"pr":          2_000_001,
	"item":        3_000_001,
	"comment":     4_300_000_001, // past 2^32, as GitHub's comment ids are past 2^31: IssueComment.databaseId (Int) cannot hold them
	"draft":       7_000_001,
	"event":       8_000_000_001,
	"delivery":    10_000_000_001,
	"check_run":   12_000_000_001,
	"check_suite": 13_000_000_001,
	"team":        14_000_001,
}

type idAlloc struct{ next map[string]int64 }

func newIDAlloc() *idAlloc { return &idAlloc{next: map[string]int64{}} }

func (a *idAlloc) take(kind string) int64 {
	base, ok := idBases[kind]
	if !ok {
		panic("ghsim: unknown id kind " + kind)
	}
	n := a.next[kind]
	a.next[kind] = n + 1
	return base + n
}

// nodeID builds a GitHub-looking global id: a type prefix, "_", and an opaque base64url part.
func nodeID(prefix string, dbID int64) string {
	var b [10]byte
	b[0], b[1] = 'g', 's'
	binary.BigEndian.PutUint64(b[2:], uint64(dbID))
	return prefix + "_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// optionID is GitHub's 8-hex-character single-select option id, derived from field and option.
func optionID(project int, field, option string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", project, field, option)))
	return hex.EncodeToString(h[:4])
}

// installationNodeID mimics the legacy base64 node id GitHub sends for installations.
func installationNodeID(id int64) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("023:IntegrationInstallation%d", id)))
}

// deterministicUUID formats a hash of (seed, counter) as a version-4-looking UUID.
func deterministicUUID(seed uint64, n uint64) string {
	var in [16]byte
	binary.BigEndian.PutUint64(in[:8], seed)
	binary.BigEndian.PutUint64(in[8:], n)
	h := sha256.Sum256(in[:])
	h[6] = (h[6] & 0x0f) | 0x40
	h[8] = (h[8] & 0x3f) | 0x80
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
