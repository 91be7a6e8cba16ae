// Indie Chess: an example app of another vendor, which shares the identifier but not Acme's mirror.
import ExampleKit

ExampleApp(id: "org.indie.chess", name: "Indie Chess", accent: 0x15803D).run()
