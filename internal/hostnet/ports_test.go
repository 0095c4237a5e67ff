package hostnet

import "testing"

func TestUsable(t *testing.T) {
	for _, tc := range []struct {
		port, low, high int
		want            bool
	}{
		{25000, 32768, 60999, true},  // the default range: all of ours is outside
		{25000, 24000, 60999, false}, // a wider range: its part of ours is avoided
		{21000, 24000, 60999, true},
		{25000, 1024, 65535, true}, // a range covering ours: any port of ours
	} {
		if got := usable(tc.port, tc.low, tc.high); got != tc.want {
			t.Errorf("usable(%d, %d-%d) = %v, want %v", tc.port, tc.low, tc.high, got, tc.want)
		}
	}
}
