// Package plugins is the home of Herald's ready-made plugins, one package
// each: ping, echo, count, help and stats. Register them with
// engine.Engine.Use:
//
//	e.Use(ping.New(), echo.New(), count.New(), help.New(), stats.New())
package plugins
