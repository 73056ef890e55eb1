package snapshots

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestCopiesAnswerOnce: a copy handed over wakes the reconciler for its
// VolumePluginRestore and gets one answer; a copy its restore stopped
// waiting for gets none, and a newer copy under the same name is not
// answered for the old one.
func TestCopiesAnswerOnce(t *testing.T) {
	ctx := context.Background()
	c := NewCopies()
	key := types.NamespacedName{Namespace: "salvor", Name: "r-1234"}

	first := &copyFollow{volumeID: "vol-1"}
	done, err := c.follow(ctx, key, first)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-c.wake; ev.Object.GetNamespace() != key.Namespace || ev.Object.GetName() != key.Name {
		t.Fatalf("woke %s/%s; want %s", ev.Object.GetNamespace(), ev.Object.GetName(), key)
	}
	if c.get(key) != first {
		t.Fatal("the copy handed over is not followed")
	}
	failed := errors.New("volume vol-1: broken")
	c.end(key, first, failed)
	c.end(key, first, nil) // a second answer is dropped
	if got := <-done; got != failed {
		t.Fatalf("answer %v; want %v", got, failed)
	}
	select {
	case got := <-done:
		t.Fatalf("a second answer %v", got)
	default:
	}
	if c.get(key) != nil {
		t.Fatal("an ended copy is still followed")
	}

	// The restore stops waiting: the reconciler's answer goes nowhere.
	second := &copyFollow{volumeID: "vol-2"}
	done, _ = c.follow(ctx, key, second)
	<-c.wake
	c.drop(key, second)
	c.end(key, second, nil)
	select {
	case got := <-done:
		t.Fatalf("a dropped copy was answered: %v", got)
	default:
	}

	// A newer copy under the name: the old one's end leaves it followed.
	third, fourth := &copyFollow{volumeID: "vol-3"}, &copyFollow{volumeID: "vol-4"}
	_, _ = c.follow(ctx, key, third)
	<-c.wake
	done4, _ := c.follow(ctx, key, fourth)
	<-c.wake
	c.end(key, third, nil)
	c.drop(key, third)
	if c.get(key) != fourth {
		t.Fatal("the newer copy stopped being followed for the old one")
	}
	c.end(key, fourth, nil)
	if got := <-done4; got != nil {
		t.Fatalf("answer %v; want nil", got)
	}

	// A restore whose context is done hands nothing over.
	full := &Copies{following: map[types.NamespacedName]*copyFollow{}} // no reconciler takes its wake-ups
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := full.follow(cancelled, key, &copyFollow{}); !errors.Is(err, context.Canceled) || full.get(key) != nil {
		t.Fatalf("follow with a done context: %v, followed %v", err, full.get(key))
	}
}
