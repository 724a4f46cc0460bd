fn main() {
    println!("hello from the sample workspace");
}
