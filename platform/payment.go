package platform

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// CurrencyStars is the currency of Telegram Stars, the one digital goods
// are paid in on Telegram: an [Invoice] with no Currency is in Stars.
const CurrencyStars = "XTR"

// Invoice is a bill a bot sends ([OutboundMessage] Invoice): the user
// sees its title, description and prices with a button to pay. When they
// pay, the bot gets an [EventPreCheckout] to accept or refuse, then an
// [EventPayment]. It is a plain value.
type Invoice struct {
	// Title (1 to 32 characters) and Description (1 to 255) describe the
	// product.
	Title       string `json:"title"`
	Description string `json:"description"`
	// Payload is the bot's own reference for the order (1 to 128 bytes),
	// given back in the pre-checkout query and the payment; users never
	// see it.
	Payload string `json:"payload"`
	// Currency is the ISO 4217 code of the prices, or CurrencyStars
	// ("XTR"), which empty means.
	Currency string `json:"currency,omitempty"`
	// Prices are the price's parts, in the currency's smallest unit (a
	// cent; a star); Telegram Stars take exactly one.
	Prices []Price `json:"prices"`
	// ProviderToken is the payment provider's token; empty for Stars.
	ProviderToken string `json:"provider_token,omitempty"`
	// PhotoURL is a picture of the product, or empty.
	PhotoURL string `json:"photo_url,omitempty"`
	// StartParameter makes a forwarded invoice open the bot with this
	// start parameter instead of paying in place; empty keeps it payable
	// wherever it is forwarded.
	StartParameter string `json:"start_parameter,omitempty"`
}

// Price is one labelled part of an [Invoice]'s price, in the currency's
// smallest unit.
type Price struct {
	Label  string `json:"label"`
	Amount int64  `json:"amount"`
}

// validate checks the invoice for [OutboundMessage.Validate].
func (inv *Invoice) validate() error {
	switch {
	case inv.Title == "" || utf8.RuneCountInString(inv.Title) > 32:
		return fmt.Errorf("%w: an invoice's title has 1 to 32 characters", ErrInvalidMessage)
	case inv.Description == "" || utf8.RuneCountInString(inv.Description) > 255:
		return fmt.Errorf("%w: an invoice's description has 1 to 255 characters", ErrInvalidMessage)
	case inv.Payload == "" || len(inv.Payload) > 128:
		return fmt.Errorf("%w: an invoice's payload has 1 to 128 bytes", ErrInvalidMessage)
	case len(inv.Prices) == 0:
		return fmt.Errorf("%w: an invoice without a price", ErrInvalidMessage)
	case (inv.Currency == "" || inv.Currency == CurrencyStars) && len(inv.Prices) != 1:
		return fmt.Errorf("%w: an invoice in Telegram Stars has exactly one price", ErrInvalidMessage)
	}
	for i, p := range inv.Prices {
		if p.Label == "" || p.Amount <= 0 {
			return fmt.Errorf("%w: price %d: a label and a positive amount", ErrInvalidMessage, i)
		}
	}
	return nil
}

// Payment is what a payment event carries: for an [EventPreCheckout] the
// order about to be paid, for an [EventPayment] the payment made and for
// an [EventRefund] the payment refunded. The zero value is no payment.
type Payment struct {
	// Currency is the ISO 4217 code, or CurrencyStars, and Amount the
	// total in the currency's smallest unit.
	Currency string `json:"currency,omitempty"`
	Amount   int64  `json:"amount,omitempty"`
	// Payload is the [Invoice] Payload the bot gave.
	Payload string `json:"payload,omitempty"`
	// ChargeID is the platform's ID of the payment (Telegram's
	// telegram_payment_charge_id), which a refund names;
	// ProviderChargeID the payment provider's, if any.
	ChargeID         string `json:"charge_id,omitempty"`
	ProviderChargeID string `json:"provider_charge_id,omitempty"`
	// ShippingOptionID is the shipping option the user chose, if any.
	ShippingOptionID string `json:"shipping_option_id,omitempty"`
	// SubscriptionExpires is when a subscription paid for ends; zero for
	// a one-time payment. Recurring and FirstRecurring mark the payments
	// of a subscription, and its first.
	SubscriptionExpires time.Time `json:"subscription_expires,omitzero"`
	Recurring           bool      `json:"recurring,omitempty"`
	FirstRecurring      bool      `json:"first_recurring,omitempty"`
}

// PreCheckoutAnswer is a bot's answer to an [EventPreCheckout]: OK
// accepts the order, so the payment goes ahead; otherwise Error is shown
// to the user as the reason it was refused. The zero value refuses the
// order (with the adapter's default reason), so an answer forgotten never
// takes money for an order the bot did not check.
type PreCheckoutAnswer struct {
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// PreCheckoutAnswerer is implemented by an [Adapter] whose platform asks
// the bot to confirm each payment before it is made (Telegram's
// answerPreCheckoutQuery, due within 10 seconds).
//
// AnswerPreCheckout answers ev, an EventPreCheckout of this adapter, with
// a, and returns once the platform took the answer. A query is answered at
// most once: by the bot, or by the adapter itself when no answer came in
// time (refusing the order, since the platform would cancel it anyway); a
// later AnswerPreCheckout then fails with a [Permanent] error wrapping
// [ErrAlreadyAnswered]. An event without a QueryID is refused with a
// permanent error wrapping [ErrInvalidMessage]; other errors follow
// [Sender]'s kinds. It is safe for concurrent use.
type PreCheckoutAnswerer interface {
	Adapter
	AnswerPreCheckout(ctx context.Context, ev Event, a PreCheckoutAnswer) error
}

// BusinessConnection is what an [EventBusinessConnection] carries: a
// business account's connection of the bot, through which the bot reads
// and answers the account's private chats. The zero value is none.
type BusinessConnection struct {
	// ID names the connection: the BusinessConnectionID of the chats it
	// serves.
	ID string `json:"id"`
	// User is the business account, and UserChatID the private chat with
	// it.
	User       User   `json:"user,omitzero"`
	UserChatID string `json:"user_chat_id,omitempty"`
	// Enabled is false once the connection ended.
	Enabled bool `json:"enabled,omitempty"`
	// CanReply reports whether the bot may send messages in the chats the
	// connection serves.
	CanReply bool `json:"can_reply,omitempty"`
	// Since is when the connection was made.
	Since time.Time `json:"since,omitzero"`
}
