// Package plugins is the home of Herald's ready-made plugins, one package
// each: ping, echo, count, menu, greet, note, remind,
// fileecho, help and stats.
// Register them with engine.Engine.Use:
//
//	e.Use(ping.New(), echo.New(), count.New(), menu.New(), greet.New(), note.New(), remind.New(), fileecho.New(), help.New(), stats.New())
package plugins
