package future_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldbot/herald/infra/future"
)

func ExampleFuture() {
	f := future.New[string]()
	go func() {
		// The producer resolves the Future once its work is done.
		f.Resolve("sent", nil)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := f.Wait(ctx)
	fmt.Println(v, err)
	// Output: sent <nil>
}

func ExampleFuture_Result() {
	f := future.New[int]()
	_, err := f.Result()
	fmt.Println(err)
	f.Resolve(42, nil)
	v, err := f.Result()
	fmt.Println(v, err)
	// Output:
	// future: not ready
	// 42 <nil>
}
