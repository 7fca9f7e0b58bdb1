package onebot

import "github.com/heraldbot/herald/platform"

var _ platform.LimitedAdapter = (*Adapter)(nil)

// DefaultLimits returns the send budget the adapter applies unless
// [Config.Limits] says otherwise, a conservative one for QQ accounts:
//
//   - overall, one message a second in bursts of at most 3;
//   - to each chat, one a second in bursts of 3;
//   - to each group, 20 a minute: bursts of 3, and 17 a minute after,
//     so that no minute holds more than 20.
//
// Tencent publishes no limits for accounts driven through OneBot
// implementations (go-cqhttp, NapCat, Lagrange, LLOneBot): it enforces
// unpublished ones with "risk control" (风控), which silently hides a
// flooding account's group messages from everyone else, then freezes or
// bans the account. The figures are those the community settled on:
// go-cqhttp's own API rate limiter, when enabled, allows one call a
// second with a bucket of one (its config.yml, default-middlewares
// rate-limit: frequency 1, bucket 1); accounts sending to a group every
// few seconds were restricted (Mrs4s/go-cqhttp#1838); a burst of
// notifications after a restart got accounts banned (nonebot/nonebot2
// #2015, cnxysoft/DDBOT #128). A burst of 3 lets a short answer of a few
// messages go at once after a quiet spell, as a person would send it.
//
// An account known to be trusted by QQ (old, active, with a verified
// phone) may take more: raise Config.Limits. Lower them for a new one.
func DefaultLimits() platform.Limits {
	return platform.Limits{
		PerSecond: 1, Burst: 3,
		PerChatPerSecond: 1, PerChatBurst: 3,
		PerGroupPerSecond: 17.0 / 60, PerGroupBurst: 3, // 20 in any minute: 3 at once, 17 a minute after
	}
}
