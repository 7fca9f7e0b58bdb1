package telegram

import (
	"context"
	"fmt"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

var (
	_ platform.PreCheckoutAnswerer = (*Adapter)(nil)
	_ platform.JoinRequestAnswerer = (*Adapter)(nil)
)

// refusedOrderMessage is the reason shown for an order the bot refused
// without giving one.
const refusedOrderMessage = "The order was not accepted."

// AnswerPreCheckout answers the pre-checkout query ev (an EventPreCheckout
// of this adapter) with answerPreCheckoutQuery: ok true to accept the
// order, or false with error_message, a's Error or, when it is empty,
// "The order was not accepted.". It implements platform.PreCheckoutAnswerer
// and works whether Run runs or not.
//
// Telegram cancels a payment whose query is not answered within 10 s. A
// query is answered at most once, with the mechanism that answers button
// presses: a second answer, or one after the run refused the order itself
// because nothing answered it within 8 s of its arrival, fails with a
// permanent error wrapping platform.ErrAlreadyAnswered, before any
// request. An event that is not a pre-checkout query with a QueryID, or of
// another adapter, is refused with a permanent error wrapping
// platform.ErrInvalidMessage. Telegram's answers map as for sends; after
// a retryable failure the query counts as unanswered again.
func (a *Adapter) AnswerPreCheckout(ctx context.Context, ev platform.Event, ans platform.PreCheckoutAnswer) error {
	switch {
	case ev.Kind != platform.EventPreCheckout || ev.QueryID == "":
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: not a pre-checkout query with a QueryID", ev.ID, platform.ErrInvalidMessage))
	case ev.Platform != "" && ev.Platform != a.Name():
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: a query of adapter %q, not of %q", ev.ID, platform.ErrInvalidMessage, ev.Platform, a.Name()))
	}
	if !a.presses.claim(ev.QueryID, time.Now()) {
		return platform.Permanent(fmt.Errorf("telegram: answering pre-checkout query of event %s: %w", ev.ID, platform.ErrAlreadyAnswered))
	}
	params := tgbotapi.Params{"pre_checkout_query_id": ev.QueryID, "ok": strconv.FormatBool(ans.OK)}
	if !ans.OK {
		params["error_message"] = ans.Error
		if ans.Error == "" {
			params["error_message"] = refusedOrderMessage
		}
	}
	_, err := a.makeRequest(ctx, "answerPreCheckoutQuery", params)
	if err != nil && !platform.IsPermanent(err) {
		a.presses.release(ev.QueryID)
	}
	return a.red.Error(err)
}

// AnswerJoinRequest approves (approveChatJoinRequest) or declines
// (declineChatJoinRequest) the join request ev, an EventJoinRequest of
// this adapter, and implements platform.JoinRequestAnswerer. An event
// that is not a join request with a chat and a user is refused with a
// permanent error wrapping platform.ErrInvalidMessage, before any
// request; Telegram's answers map as for sends (a request answered
// before, "HIDE_REQUESTER_MISSING", is permanent).
func (a *Adapter) AnswerJoinRequest(ctx context.Context, ev platform.Event, approve bool) error {
	if ev.Kind != platform.EventJoinRequest {
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: not a join request", ev.ID, platform.ErrInvalidMessage))
	}
	chat, err := parseChat(ev.Chat.ID)
	if err != nil {
		return platform.Permanent(fmt.Errorf("telegram: answering join request %s: %w", ev.ID, err))
	}
	userID, err := strconv.ParseInt(ev.From.ID, 10, 64)
	if err != nil || userID <= 0 {
		return platform.Permanent(fmt.Errorf("telegram: answering join request %s: %w: user ID %q", ev.ID, platform.ErrInvalidMessage, ev.From.ID))
	}
	method := "declineChatJoinRequest"
	if approve {
		method = "approveChatJoinRequest"
	}
	params := tgbotapi.Params{"user_id": strconv.FormatInt(userID, 10)}
	_ = params.AddFirstValid("chat_id", chat.id, chat.username) // an int64 or a string: cannot fail
	_, err = a.makeRequest(ctx, method, params)
	return a.red.Error(err)
}

// RefundStarPayment refunds a payment in Telegram Stars with
// refundStarPayment: userID is the payer (the payment event's From.ID),
// chargeID the payment's Payment.ChargeID. IDs that are not Telegram's are
// refused with a permanent error wrapping platform.ErrInvalidMessage,
// before any request; Telegram's answers map as for sends (a payment
// refunded before, "CHARGE_ALREADY_REFUNDED", is permanent). A refund is
// also a method call ([platform.CallMethod]) that can go through the
// sender chain.
func (a *Adapter) RefundStarPayment(ctx context.Context, userID, chargeID string) error {
	id, err := strconv.ParseInt(userID, 10, 64)
	if err != nil || id <= 0 || chargeID == "" {
		return platform.Permanent(fmt.Errorf("telegram: refundStarPayment: %w: user %q, charge %q", platform.ErrInvalidMessage, userID, chargeID))
	}
	_, err = a.makeRequest(ctx, "refundStarPayment", tgbotapi.Params{
		"user_id": strconv.FormatInt(id, 10), "telegram_payment_charge_id": chargeID,
	})
	return a.red.Error(err)
}
