// expect: 4:3 condition
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; ; i++)
    B[0] = A[0];
}
