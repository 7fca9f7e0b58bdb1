package resume_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/infra/resume"
)

func TestLaterWithoutTaskWaitsInPlace(t *testing.T) {
	if err := resume.Later(context.Background(), time.Second); err != nil {
		t.Fatalf("Later without a Task = %v; want nil", err)
	}
	if resume.FromContext(context.Background()) != nil {
		t.Fatal("FromContext found a Task in Background")
	}
}

func TestLaterWithTask(t *testing.T) {
	task := resume.NewTask()
	ctx := resume.NewContext(context.Background(), task)
	if got := resume.FromContext(ctx); got != task {
		t.Fatalf("FromContext = %p; want %p", got, task)
	}
	err := resume.Later(ctx, 3*time.Second)
	d, ok := resume.DelayOf(fmt.Errorf("layer: %w", err))
	if !ok || d != 3*time.Second {
		t.Fatalf("DelayOf(wrapped %v) = %v, %v; want 3s, true", err, d, ok)
	}
	if d, ok := resume.DelayOf(resume.Later(ctx, -time.Second)); !ok || d != 0 {
		t.Fatalf("negative delay gives %v, %v; want 0, true", d, ok)
	}
	for _, err := range []error{nil, errors.New("other"), context.Canceled} {
		if _, ok := resume.DelayOf(err); ok {
			t.Errorf("DelayOf(%v) reports a wait", err)
		}
	}
}

func TestTaskValues(t *testing.T) {
	task := resume.NewTask()
	type key struct{ n int }
	for i := range 5 {
		task.SetValue(key{i}, i)
	}
	task.SetValue(key{2}, "two")
	task.SetValue(key{3}, nil)
	task.SetValue(key{9}, nil) // removing a missing key is a no-op
	for i, want := range []any{0, 1, "two", nil, 4, nil} {
		if got := task.Value(key{i}); got != want {
			t.Errorf("Value(%d) = %v; want %v", i, got, want)
		}
	}
	if task.Runs() != 0 {
		t.Fatalf("Runs = %d before Start", task.Runs())
	}
	task.Start()
	task.Start()
	if task.Runs() != 2 {
		t.Fatalf("Runs = %d after two starts", task.Runs())
	}
}

// A layer that must wait saves where it stopped and returns Later's error;
// run again, it carries on from there. Without a Task it sleeps in place.
func ExampleLater() {
	type progress struct{ attempt int }
	var key progress // any comparable value of an unexported type

	step := func(ctx context.Context) error {
		p := progress{attempt: 1}
		if t := resume.FromContext(ctx); t != nil {
			if saved, ok := t.Value(&key).(progress); ok {
				p = saved // a later run: carry on
			}
		}
		for ; p.attempt <= 2; p.attempt++ {
			fmt.Println("attempt", p.attempt)
			if p.attempt == 2 {
				return nil
			}
			if err := resume.Later(ctx, time.Second); err != nil {
				resume.FromContext(ctx).SetValue(&key, progress{attempt: p.attempt + 1})
				return err
			}
			time.Sleep(time.Millisecond) // no scheduler: wait in place
		}
		return nil
	}

	// What a scheduler does: run, and on a WaitError run again after Delay.
	task := resume.NewTask()
	ctx := resume.NewContext(context.Background(), task)
	for {
		task.Start()
		err := step(ctx)
		if d, ok := resume.DelayOf(err); ok {
			fmt.Println("worker free for", d)
			continue
		}
		fmt.Println("done after", task.Runs(), "runs:", err)
		break
	}
	// Output:
	// attempt 1
	// worker free for 1s
	// attempt 2
	// done after 2 runs: <nil>
}
