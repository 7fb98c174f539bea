import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { MainLive } from "./Main.js"

NodeRuntime.runMain(Layer.launch(MainLive), { disablePrettyLogger: true })
