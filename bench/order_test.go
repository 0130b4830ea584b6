package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeyOrderIsAPermutation(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 100, 1000, 1 << 12, 123361} {
		o := newKeyOrder(n, 1)
		seen := make([]bool, n)
		inPlace, adjacent := 0, 0
		prev := -2
		for i := 0; i < n; i++ {
			k := o.at(i)
			require.True(t, k >= 0 && k < n, "n=%d: at(%d) = %d", n, i, k)
			require.False(t, seen[k], "n=%d: key %d twice", n, k)
			seen[k] = true
			if k == i {
				inPlace++
			}
			if k == prev+1 {
				adjacent++
			}
			prev = k
		}
		if n >= 1000 {
			// A random order leaves about one key in place and about
			// one successor adjacent; a stride or an identity would
			// leave many.
			require.Less(t, inPlace, 10, "n=%d", n)
			require.Less(t, adjacent, 10, "n=%d", n)
		}
	}
}

func TestKeyOrderIsFixed(t *testing.T) {
	a, b := newKeyOrder(5000, 1), newKeyOrder(5000, 1)
	c := newKeyOrder(5000, 2)
	same := 0
	for i := 0; i < 5000; i++ {
		require.Equal(t, a.at(i), b.at(i))
		if a.at(i) == c.at(i) {
			same++
		}
	}
	require.Less(t, same, 20, "another seed gives another order")
}

func BenchmarkKeyOrder(b *testing.B) {
	o := newKeyOrder(16<<20, 1)
	sum := 0
	for i := 0; b.Loop(); i++ {
		sum += o.at(i & (16<<20 - 1))
	}
	_ = sum
}
