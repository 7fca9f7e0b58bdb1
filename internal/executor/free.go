package executor

import "sync"

// A freeList keeps structs of one kind — a shard's retired chats or
// finished task nodes — for reuse, so that the common path allocates
// nothing. It is used under its shard's lock.
//
// It holds at most the limit its caller passes to put, which follows what
// the shard has in use; the structs past it go, in chunks of spillLen, to
// a sync.Pool of the executor, where this or another shard takes them when
// its list runs dry, unless the garbage collector has taken them first.
// So memory follows use: the structs of a burst serve the next burst, and
// those of an executor that became idle go with the next collections.
type freeList[T any, P linked[T]] struct {
	head   P
	n      int
	spill  P // chain of the structs past the limit, for the pool
	spillN int
	pool   *sync.Pool // of *chain[T]
}

// linked is a pointer to a struct with a link field that a freeList may
// use while the struct is free.
type linked[T any] interface {
	*T
	nextLink() *T
	setNextLink(*T)
}

// chain is a chain of free structs in a freeList's pool.
type chain[T any] struct {
	head *T
	n    int
}

// spillLen is the length of the chains a freeList gives its pool.
const spillLen = 256

// slabLen is how many structs a freeList allocates at once when it has
// none to give: one allocation, not one per struct, for a queue that grows
// deep. (A struct in use keeps its slab's memory.)
const slabLen = 32

// get returns a free struct, or a new one; its link is nil.
func (l *freeList[T, P]) get() P {
	if l.head == nil {
		switch {
		case l.spill != nil:
			l.head, l.n, l.spill, l.spillN = l.spill, l.spillN, nil, 0
		default:
			c, _ := l.pool.Get().(*chain[T])
			if c == nil {
				slab := make([]T, slabLen)
				for i := 1; i < slabLen; i++ {
					l.put(&slab[i], slabLen)
				}
				return &slab[0]
			}
			l.head, l.n = P(c.head), c.n
		}
	}
	x := l.head
	l.head = P(x.nextLink())
	l.n--
	x.setNextLink(nil)
	return x
}

// put keeps x, which the caller has cleared, for reuse: in the list if it
// holds fewer than limit structs, else in the spill for the pool.
func (l *freeList[T, P]) put(x P, limit int) {
	if l.n < limit {
		x.setNextLink(l.head)
		l.head = x
		l.n++
		return
	}
	x.setNextLink(l.spill)
	l.spill = x
	l.spillN++
	if l.spillN == spillLen {
		l.pool.Put(&chain[T]{head: l.spill, n: l.spillN})
		l.spill, l.spillN = nil, 0
	}
}

// trim gives the pool the spill, and the list too if it holds more than
// keep structs: a shard that became idle keeps at most keep.
func (l *freeList[T, P]) trim(keep int) {
	if l.spill != nil {
		l.pool.Put(&chain[T]{head: l.spill, n: l.spillN})
		l.spill, l.spillN = nil, 0
	}
	if l.n > keep {
		l.pool.Put(&chain[T]{head: l.head, n: l.n})
		l.head, l.n = nil, 0
	}
}

func (c *chat) nextLink() *chat             { return c.next }
func (c *chat) setNextLink(n *chat)         { c.next = n }
func (t *taskNode) nextLink() *taskNode     { return t.next }
func (t *taskNode) setNextLink(n *taskNode) { t.next = n }
