package platform

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MethodCall is a call of one of a platform's methods by its name, with
// its parameters as a JSON object: the way to anything Herald has no
// field or operation for (Telegram: any Bot API method, such as
// "pinChatMessage" or "createForumTopic"). See [OutboundMessage] Call.
//
// Adapters pass Params on as the platform takes them (Telegram: each
// member as a parameter, strings as they are and other values as JSON)
// and return the platform's answer in [SendResult] Raw. An adapter of a
// platform without such calls refuses one with a [Permanent] error
// wrapping [ErrUnsupported]. It is a plain value.
type MethodCall struct {
	// Method is the method's name: a letter, then letters, digits and
	// "_".
	Method string `json:"method"`
	// Params are the parameters, a JSON object; empty means none.
	Params json.RawMessage `json:"params,omitempty"`
}

// CallMethod returns the message that calls method with params (a map or
// a struct, marshalled to a JSON object; nil for none): send it to a chat
// like any message (Telegram's adapter adds the chat's ID as chat_id when
// params have none) and read the answer in the result's Raw. Its error
// wraps [ErrInvalidMessage] when params do not marshal to an object or the
// name is not a method name.
func CallMethod(method string, params any) (OutboundMessage, error) {
	c := &MethodCall{Method: method}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return OutboundMessage{}, fmt.Errorf("%w: the parameters of %s: %w", ErrInvalidMessage, method, err)
		}
		c.Params = b
	}
	if err := c.validate(); err != nil {
		return OutboundMessage{}, err
	}
	return OutboundMessage{Call: c}, nil
}

// validate checks c for [OutboundMessage.Validate].
func (c *MethodCall) validate() error {
	if !isMethodName(c.Method) {
		return fmt.Errorf("%w: %q is not a method name", ErrInvalidMessage, c.Method)
	}
	p := bytes.TrimSpace(c.Params)
	if len(p) == 0 || string(p) == "null" {
		return nil
	}
	if p[0] != '{' || !json.Valid(p) {
		return fmt.Errorf("%w: the parameters of %s are not a JSON object", ErrInvalidMessage, c.Method)
	}
	return nil
}

// isMethodName reports whether s is a letter followed by letters, digits
// and "_", at most 64 bytes.
func isMethodName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '_'):
		default:
			return false
		}
	}
	return true
}
