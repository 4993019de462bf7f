// expect: 3:22 extent
// options: --size N=8
void f(int N, double A[]) {
  A[0] = 1.0;
}
