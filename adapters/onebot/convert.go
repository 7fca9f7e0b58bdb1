package onebot

import (
	"strconv"
	"time"

	"github.com/heraldbot/herald/platform"
)

// toPlatform converts a decoded event received on the connection of bot
// selfID into a platform event. seq names the event among the adapter's
// (its run's token and a number, see Adapter.nextSeq) and makes IDs of
// events without a message ID unique, across restarts too: a message's ID
// is "<self_id>:<message_id>", any other event's
// "<self_id>:<post_type>:<seq>". Meta events are not converted:
// ok is false for them.
//
// Mapping:
//   - message (private or group) → [platform.EventMessage]; message_sent
//     (the bot's own messages, reported by some implementations) →
//     [platform.EventOther], so a bot does not answer itself;
//   - a message's image, record, video and file segments → Attachments,
//     in order: an image is a photo, or a sticker with sub type 1
//     (subType or sub_type), a record a voice note, a video a video, a
//     file (NapCat, Lagrange) a document. FileID is the segment's file
//     parameter (file_id for a file segment that has one), which sends
//     the file again; URL its url (or a file parameter that is a web
//     URL); FileName its name or file_name (a file segment's file when
//     it has a file_id); Size its file_size or size. The message's text
//     stays in Text: captions are not split off;
//   - notice group_increase → [platform.EventMemberJoined], group_decrease →
//     [platform.EventMemberLeft], other notices → EventOther;
//   - request → EventOther (Raw has the flag to approve it with);
//   - any other post type → EventOther.
func toPlatform(name string, ev *Event, selfID int64, seq string) (platform.Event, bool) {
	if ev.PostType == PostMetaEvent {
		return platform.Event{}, false
	}
	if selfID == 0 {
		selfID = ev.SelfID
	}
	out := platform.Event{
		Platform: name,
		Kind:     platform.EventOther,
		Time:     time.Unix(ev.Time, 0).UTC(),
		Raw:      ev,
	}
	if ev.Time == 0 {
		out.Time = time.Now().UTC()
	}
	if ev.UserID != 0 {
		out.From = platform.User{ID: strconv.FormatInt(ev.UserID, 10)}
	}
	switch {
	case ev.GroupID != 0:
		out.Chat = GroupChat(selfID, ev.GroupID)
	case ev.UserID != 0:
		out.Chat = PrivateChat(selfID, ev.UserID)
	}
	out.ID = strconv.FormatInt(selfID, 10) + ":" + ev.PostType + ":" + seq

	switch ev.PostType {
	case PostMessage:
		out.Kind = platform.EventMessage
		if ev.MessageType == "private" {
			out.Chat = PrivateChat(selfID, ev.UserID)
		}
		if ev.MessageID != 0 {
			out.ID = strconv.FormatInt(selfID, 10) + ":" + strconv.FormatInt(ev.MessageID, 10)
		}
		out.MessageID = strconv.FormatInt(ev.MessageID, 10)
		out.From.Name = ev.Sender.DisplayName()
		out.Text = ev.Message.Text()
		out.ReplyToID = ev.Message.ReplyTo()
		out.Attachments = attachmentsOf(ev.Message)
	case PostNotice:
		switch ev.NoticeType {
		case "group_increase":
			out.Kind = platform.EventMemberJoined
		case "group_decrease":
			out.Kind = platform.EventMemberLeft
		}
	case PostRequest:
		out.Text = ev.Comment
	}
	return out, true
}
