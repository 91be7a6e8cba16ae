public enum ExampleKit {}
