package app_test

import (
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/metrics"
)

// The façade's duration histogram and the store's per-minute counts use the same buckets, so
// the p99 of /metrics and of board_health fall on the same bounds.
func TestToolCallBucketsAgree(t *testing.T) {
	bounds, buckets := enforce.DurationBounds(), metrics.ToolBuckets()
	if len(bounds) != len(buckets) {
		t.Fatalf("%d store bounds, %d histogram buckets", len(bounds), len(buckets))
	}
	for i, b := range bounds {
		if time.Duration(buckets[i]*float64(time.Second)) != b {
			t.Errorf("bucket %d: histogram %vs, store %v", i, buckets[i], b)
		}
	}
}
