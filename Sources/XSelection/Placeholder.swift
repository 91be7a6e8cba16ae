public enum XSelectionPlaceholder {}
