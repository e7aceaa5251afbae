package main

import "github.com/shotd/shotd/internal/chaos"

func main() { chaos.SoakTool() }
