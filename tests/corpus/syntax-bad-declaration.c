// expect: 4:3 syntax
// options: --size N=8
void f(int N, double A[N]) {
  int = 3;
  A[0] = 1.0;
}
