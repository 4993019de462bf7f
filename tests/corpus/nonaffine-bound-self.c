// expect: 4:23 depend on
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < i + 1; i++)
    B[0] = A[0];
}
