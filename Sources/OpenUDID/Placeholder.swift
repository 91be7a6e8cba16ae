public enum OpenUDIDPlaceholder {}
